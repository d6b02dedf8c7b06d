"""Small Sphinx fixes for the cnce book (loaded from _config.yml: sphinx.local_extensions).

sphinx-thebe registers its inline configuration script on every ``env-before-read-docs``
event; in a Jupyter Book 1 build that event can fire more than once, and the page then
declares ``const THEBE_JS_URL`` twice, which is a JavaScript error in every browser. Here the
page's script list is de-duplicated before the page is written.
"""
from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        key = (getattr(js, "filename", None) or "", tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(js)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
