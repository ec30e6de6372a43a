"""Who knows this (issue 17): CODEOWNERS (:mod:`.codeowners`), Git authorship (:mod:`.history`) and the ranking (:mod:`.service`)."""
