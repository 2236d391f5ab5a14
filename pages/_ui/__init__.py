"""UI-side helpers of the dashboard: state and caching, the shared sidebar, page views."""
