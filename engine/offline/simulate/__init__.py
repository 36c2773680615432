"""A seeded card-payment simulator: world, text, frames and sinks."""
