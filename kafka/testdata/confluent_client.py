"""Produce and consume through confluent-kafka (librdkafka) for the Go tests.

usage: confluent_client.py BOOTSTRAP TOPIC GROUP PRODUCE_COUNT CONSUME_COUNT

Produces PRODUCE_COUNT messages (key "py-i", value "python i", header
"src: py"), compressed with zstd, then consumes CONSUME_COUNT messages with
consumer group GROUP from the earliest offset, commits them and prints one
line per message: key (or "-"), a tab, the value in hex.
"""
import sys

from confluent_kafka import Consumer, KafkaException, Producer


def main():
    bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    produce, consume = int(sys.argv[4]), int(sys.argv[5])
    errors = []

    def report(err, _msg):
        if err is not None:
            errors.append(err)

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "enable.idempotence": True,
                  "linger.ms": 20})
    for i in range(produce):
        p.produce(topic, key="py-%d" % i, value=("python %d" % i).encode(), headers=[("src", b"py")],
                  on_delivery=report)
    if p.flush(30) != 0 or errors:
        raise SystemExit("produce failed: %s" % errors)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    while got < consume:
        m = c.poll(30)
        if m is None:
            raise SystemExit("consume timed out after %d messages" % got)
        if m.error():
            raise KafkaException(m.error())
        key = m.key().decode() if m.key() is not None else "-"
        print("%s\t%s" % (key, (m.value() or b"").hex()))
        c.commit(message=m, asynchronous=False)
        got += 1
    c.close()


if __name__ == "__main__":
    main()
