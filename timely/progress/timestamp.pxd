# The C-level API of timestamps as rows of uint64, for compiled modules of other packages.
from timely.progress._rows cimport TLY_MAX_ARITY, tly_row_le
from timely.progress._timestamp cimport arity_of_time, fill_row, settle_arity
