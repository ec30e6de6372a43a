"""Who knows this: CODEOWNERS (:mod:`.codeowners`), Git authorship (:mod:`.history`) and the ranking (:mod:`.service`)."""
