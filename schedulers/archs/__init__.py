"""The built-in architectures: one line each, the import path of its
``ArchSpec`` (``schedulers.arch`` explains the contract). Other
distributions register theirs under the entry point group
``schedlab.architectures``."""

BUILTIN = (
    "schedlab.schedulers.archs.omega.spec:SPEC",
    "schedlab.schedulers.archs.mesos.spec:SPEC",
    "schedlab.schedulers.archs.borg.spec:SPEC",
    "schedlab.schedulers.archs.dispatcher.spec:SPEC",
    "schedlab.schedulers.archs.yarn.spec:SPEC",
    "schedlab.schedulers.archs.kubernetes.spec:SPEC",
    "schedlab.schedulers.archs.slurm.spec:SPEC",
    "schedlab.schedulers.archs.htcondor.spec:SPEC",
    "schedlab.schedulers.archs.sparrow.spec:SPEC",
    "schedlab.schedulers.archs.webfarm.spec:SPEC",
)

# Events declared outside any ArchSpec (a federation of cells is not an
# architecture of one cell): "module:attribute" of a tuple of EventTypes.
EVENT_SOURCES = ("schedlab.schedulers.federation.events:EVENTS",)

DEFAULT = "omega"  # a scenario without ``architecture = ...``
