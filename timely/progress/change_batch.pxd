# The C-level API of ChangeBatch, for compiled modules of other packages.
from timely.progress._change_batch cimport ChangeBatch
