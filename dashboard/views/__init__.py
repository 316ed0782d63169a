"""Presentation-ready data built from rebuilt traces (no Streamlit import): tables, DOT, timelines."""
