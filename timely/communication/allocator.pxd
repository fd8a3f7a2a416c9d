# The C-level API of the channel puller, for compiled modules of other packages.
from timely.communication._mailbox cimport Puller
