"""ontology: curates ingested artifacts into concepts and evidence-weighed assertions (parse, merge, weigh, store, serve)."""
