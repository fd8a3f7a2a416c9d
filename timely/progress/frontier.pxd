# The C-level API of Antichain and MutableAntichain, for compiled modules of other packages.
from timely.progress._frontier cimport Antichain, MutableAntichain
