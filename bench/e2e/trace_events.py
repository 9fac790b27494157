"""trace_events.py: the events of one TriRace trace file (Chrome trace JSON,
interpose/trace/trace_writer.h), for the e2e scripts beside it.

A rank that died leaves its trace without the closing part; such a file is
read up to where it ends. Only the Python standard library.
"""
import json


def read_trace_events(path):
    """The trace's event list. Raises OSError or ValueError when the file
    cannot be read or is not a trace, even cut short."""
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = json.loads(text.rstrip().rstrip(",") + "]}")
    return doc["traceEvents"] if isinstance(doc, dict) else doc
