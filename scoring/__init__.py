"""Pure numpy scoring: decay, salience, fusion, stage-two rerank. Arrays in, arrays out; no I/O, no project imports."""
