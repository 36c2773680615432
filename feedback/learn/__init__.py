"""Learning from outcomes: dataset, preference loss, fine-tune, gate, scheduler, export."""
