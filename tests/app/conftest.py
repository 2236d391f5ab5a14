"""AppTest fixtures: absolute paths, caches cleared between tests."""

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from apptest_helpers import APP


@pytest.fixture(autouse=True)
def _clear_caches():
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app():
    """A fresh app on the default demo data, run once."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
