# The C-level API of Tracker, for compiled modules of other packages.
from timely.progress._reachability cimport Tracker
