"""Page scripts, registered explicitly by app.py (kept out of the top level of pages/ so that
Streamlit never falls back to its legacy pages-directory mode)."""
