"""ORC data files written a stripe per thread: stripes encoded in parallel, stitched in order.

pyarrow's ORC writer encodes on one core; a file's stripes are independent, so each is encoded
by its own writer into memory and copied into the file, whose tail (stripe list, stripe and
file statistics) is rebuilt as ORC's C++ writer builds it: file statistics are the merge of
the stripe statistics, in stripe order, with that writer's rules. Decimal columns of up to 18
digits are encoded by us (numpy) and spliced into pyarrow's stripes.
"""
