"""AppTest fixtures: absolute paths, caches cleared between tests."""

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from apptest_helpers import APP


def _clear():
    from pages._ui.memo import clear_all

    st.cache_resource.clear()
    st.cache_data.clear()
    clear_all()


@pytest.fixture(autouse=True)
def _clear_caches():
    _clear()
    yield
    _clear()


@pytest.fixture
def app():
    """A fresh app on the default demo data, run once."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
