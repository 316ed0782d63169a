"""Tests of OTLP ingestion: decoders, files, the embedded store, the receiver, ClickHouse."""
