"""The query log: every answered question, its retrieved chunks and the 👍/👎 feedback,
in the SQL database (``common.db``; tables in :mod:`.models`, migration ``0003_querylog``).

Modules: ``models`` (tables), ``recorder`` (writes one query + its chunks per transaction;
feedback votes), ``pricing`` (USD per token), ``privacy`` (HMAC user ids), ``stats``
(``coderag stats``), ``export`` (golden-set JSONL of coverage gaps), ``retention``
(text pruning, APScheduler job). Importing this package does not import slack-bolt.
"""
