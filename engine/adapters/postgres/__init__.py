"""PostgreSQL for the control plane: API keys, tuning versions and the ledger (``FELTSENSE_POSTGRES__URL``).

``connection`` opens the pool (``open_pool``) and runs one transaction on one connection (``transaction``);
``migrations`` brings each component's tables to the version its code knows (``migrate``). Each component's
adapter keeps its own migrations. Only this package imports psycopg: vendor errors become the engine's
(``BackendUnavailable``, ``ConfigurationError``) here.
"""
