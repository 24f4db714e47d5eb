"""vcrpy extensions, one small module each: serializer, persister, matchers, scrubbing."""
