"""Framework configurations in and out of rlsim scenarios (``rlsim import-config``, ``rlsim plan --emit``).

Owns: the adapter contract (``adapter``: :class:`~rlsim.frameworks.adapter.FrameworkAdapter` and the types its
methods take), what adapters share (``common``; ``launch``: launch scripts read as text; ``sglang``: SGLang as a
rollout engine; ``basic``: what the adapters of slime, SkyRL, prime-rl, AReaL and ROLL share), one package per
framework (``verl``, ``trl``, ``openrlhf``, ``nemo_rl``, ``slime``, ``skyrl``, ``prime_rl``, ``areal``, ``roll``,
each defining ``ADAPTER``), their metrics logs read as run-log records (``logs``, for ``rlsim check``), the registry
that finds them (``registry``), the import and the emit that drive them (``config_import``, ``emit``) and the
generated tables of docs/import-config.md (``docs``).

May import: rlsim.schema, rlsim.host, rlsim.io, rlsim.workload, rlsim.engine, rlsim.catalog, rlsim.trainer,
rlsim.scenario, rlsim.learning, rlsim.errors, rlsim.phases. Inside, imports go
one way: adapter <- common, launch, sglang <- basic <- the framework packages <- emit (OpenRLHF's argument reader);
adapter <- registry <- config_import, docs, logs.read <- emit (the registry imports the framework packages by name,
on first use).
"""
