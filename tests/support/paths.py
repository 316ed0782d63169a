"""Where things are in the repository, for tests that read its files or start its commands."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the folder holding pyproject.toml)."""
FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""Committed trace files in every import format."""
APP_SCRIPT = REPO_ROOT / "dashboard" / "streamlit_app.py"
"""The dashboard's Streamlit entry script."""
