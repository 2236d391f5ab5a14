"""Dashboard pages (registered explicitly by app.py with st.navigation)."""
