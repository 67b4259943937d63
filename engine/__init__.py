"""feltsense engine: domain models, ports, adapters and the ingest / recall / write-time services."""
