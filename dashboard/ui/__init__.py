"""Streamlit helpers shared by the pages: source selection, cached rebuilt traces, filters."""
