"""vcrpy extensions, one small module each: serializer, persister, matchers, and the
scrubbing of keys (credentials, live_keys, pieces, sse, codings, scan, scrub)."""
