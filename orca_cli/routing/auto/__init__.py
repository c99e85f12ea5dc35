"""The auto router (SPEC §16): classify the workload, gate and score every eligible model.

`classify` (the local classifier), `score` (eligibility and the objective's weights),
`model_classifier` (the pure half of the model classifier: prompt, schema, strict parser),
`request` (what the strategy reads); the strategy itself is `strategies/auto.py`.
"""
