"""What travels on Kafka: Avro/JSON codecs, the schema catalog, topic administration."""
