"""Writing a profile (or a time window of it) in other tools' trace formats, streamed.

- `chrome_trace`: Chrome-trace JSON (Perfetto, chrome://tracing and stepscope read it), with
  `chrome_text` formatting its event lines;
- `perfetto_trace`: Perfetto's protobuf trace (``.pftrace``; ui.perfetto.dev, trace_processor),
  with `stepscope.xspace.pb_columns` encoding its packets from columns.

`stepscope export` writes them; the trace viewer's own wire format is in
`stepscope.tools.trace_viewer`.
"""
