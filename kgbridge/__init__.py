"""kgbridge: carries what a coding session learns out to the knowledge graph (detect, activate, capture, deliver)."""
