"""The offline demo's LINE: a stand-in for LINE's API and a phone page (DEMO_LINE)."""
