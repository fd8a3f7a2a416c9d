"""A streaming query with ``foreach_batch`` into a :class:`DirectorySink`,
run as its own process by ``test_streaming_kills.py`` so that it can die for
real between the sink's write and its commit.

``python streaming_program.py SOURCE OUT CHECKPOINT`` runs the query on a
``local[1]`` session until the files in SOURCE are all processed
(``availableNow``, one file per micro-batch). ``TIMELY_TEST_KILL_AT``, read
only here, is ``"<point>:<batch id>"``: at that point of that batch's write
(``before write``, ``after write``, ``after commit``) the process ends at
once with ``os._exit(KILLED)``: no cleanup, no Spark shutdown, as a SIGKILL
leaves it.
"""

from __future__ import annotations

import os
import sys

KILLED = 77
SCHEMA = "epoch long, key long, total long"


def main(source: str, out: str, checkpoint: str) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from timely.examples.spark_pipeline import sum_per_epoch
    from timely.spark import foreach_batch
    from timely.spark.sinks import DirectorySink

    point, _, batch = os.environ.get("TIMELY_TEST_KILL_AT", "").partition(":")

    class DyingSink(DirectorySink):
        batch = None

        def write(self, result, batch_id, query=None):
            self.batch = batch_id
            super().write(result, batch_id, query)

        def _point(self, name):
            if name == point and str(self.batch) == batch:
                sys.stdout.flush()
                os._exit(KILLED)

    spark = (SparkSession.builder.master("local[1]").appName("timely-kill-test")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    stream = (spark.readStream.schema("key long, value long").option("maxFilesPerTrigger", 1)
              .json(os.path.join(source, "*")))
    apply = foreach_batch(sum_per_epoch, SCHEMA, DyingSink(out), workers=1)
    query = (stream.writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
