"""Signals the measure app sends for other apps (alerts, sweeps) to listen to.

measure never imports its listeners: an app that wants to react to results connects here in
its AppConfig.ready().
"""

from django.dispatch import Signal

# Sent once a finished measurement's result and trace are committed (never inside the
# transaction: a listener that fails or is slow must not undo or delay the stored result).
# Arguments: measurement_id (int). Sender: the Measurement class.
result_stored = Signal()
