package dev.tollgate.bench;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application that decides nothing: every record of the input topic is
 * written, bytes unchanged, to the output topic, with processing.guarantee=exactly_once_v2.
 * It is the peer a team would build instead of Tollgate, measured by ops/bench/peers.py
 * through the same broker, load generator and read_committed reader.
 *
 * Arguments: bootstrap input-topic output-topic application-id commit-interval-ms|default tuned(true|false)
 * Prints "kstreams ready" once the application is RUNNING, and stops on SIGTERM.
 */
public final class PassThrough {
    public static void main(String[] args) throws InterruptedException {
        if (args.length != 6) {
            System.err.println("usage: PassThrough bootstrap input output application-id commit-interval-ms|default tuned");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // A stateless topology needs no state directory; a private one keeps runs apart.
        props.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/kstreams-" + args[3]);
        if (!"default".equals(args[4])) {
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[4]));
        }
        if (Boolean.parseBoolean(args[5])) {
            // Tuned down: what Tollgate's relay uses (fetch wait 5 ms, no producer linger,
            // 1 ms retry backoff: a transaction begun right after the last one's commit is
            // answered CONCURRENT_TRANSACTIONS until the markers are written, and the
            // default 100 ms backoff then dominates the latency).
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), 5);
            props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 0);
            props.put(StreamsConfig.producerPrefix(ProducerConfig.RETRY_BACKOFF_MS_CONFIG), 1L);
            props.put(StreamsConfig.POLL_MS_CONFIG, 5L);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
               .to(args[2], Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("kstreams ready");
                System.out.flush();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
