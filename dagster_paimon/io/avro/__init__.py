"""Avro data files: Paimon's layout, encoded with numpy and decoded a block at a time.

Avro files are laid out as Paimon's Java format writes them (`AvroSchemaConverter`,
`FieldWriterFactory`, `AvroFileFormat` of Paimon 2.0): one record
`org.apache.paimon.avro.generated.record`, a nullable field as the union ["null", T] with a
null default, TINYINT and SMALLINT as int, DECIMAL as big-endian two's-complement bytes
(logicalType decimal), DATE as int date, TIME(p<=3) as int time-millis, TIMESTAMP(p) as long
timestamp-millis (p<=3) or timestamp-micros (p<=6), TIMESTAMP_LTZ as local-timestamp-*, ROW as a
nested record `<parent>_<field>`, ARRAY and VECTOR as arrays, MAP with a string key as an Avro
map and any other MAP as an array of key/value records (logicalType map). `file.compression`
picks the codec as Java does: zstd is Avro's zstandard at `file.compression.zstd-level`; the
names Java's Avro knows (null, deflate, snappy, bzip2, xz, zstandard) are used as they are;
none is written uncompressed. Types, column names and codecs Paimon's Avro writer refuses or
encodes differently from what we can write (TIME(p>3), TIMESTAMP(p>6), BLOB, VARIANT, a MAP with
a nullable non-string key, a name that is not an Avro name, lz4 or gzip compression, the
`avro.codec` override) are refused before anything is written.

Avro is encoded with numpy, a batch at a time (no per-row Python): every column becomes its
rows' bytes, and the rows' bytes are interleaved into blocks of about BLOCK_BYTES. It is
decoded a block at a time into Arrow columns of the types the Avro schema names: by polars'
Rust reader when every column is of a primitive type (the block is handed over as a container
of its own, uncompressed, without logical types, which are applied column-wise), else by
fastavro (the block read as one Avro array). io/read.py casts the columns to the table's KV types
(an Avro int is also a TINYINT or SMALLINT, a timestamp-millis also a TIMESTAMP(0)), so rows
read back equal the Parquet path's, type for type. A block is a group for lookups.
"""
