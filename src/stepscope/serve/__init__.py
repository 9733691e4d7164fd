"""The web UI: one HTTP application whose routes come from the tool registry.

`create_app` builds the ASGI app (Starlette) served by `stepscope serve`; `create_wsgi_app`
serves the same routes to WSGI hosts such as TensorBoard. Start a server from code with
`stepscope.serve.app.serve` (blocking) or `stepscope.serve.app.start_server` (background thread).
"""
