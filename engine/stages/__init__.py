"""The hot-path stages, in data-path order: consume, decode, enrich, encode, batch, infer, detect, decide, guard, emit."""
