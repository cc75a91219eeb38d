"""Maps the prober's `result` event (prober/EVENTS.md) onto Measurement columns; which
columns, and where each is read from, is declared once in vocab.RESULT_FIELDS."""
from .vocab import RESULT_FIELDS


def result_fields(event):
    """Column values for a `result` event; unknown values (null) stay None / ""."""
    fields = {field.name: field.read(event) for field in RESULT_FIELDS}
    fields["result"] = event
    return fields
