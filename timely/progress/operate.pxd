# The C-level API of the operator interface, for compiled modules of other packages.
from timely.progress._operate cimport PerOperatorState, SharedProgress
