package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import scala.Tuple2;

/**
 * The README's claim about {@code spark.cuwire.host}: unset, an executor's endpoint listens on its BlockManager's host.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CuwirePluginSettingsTest {
    @Test
    void shouldListenOnTheExecutorsBlockManagerHostWithoutTheHostSetting() {
        assertEquals(
                "",
                SparkCluster.session().sparkContext().getConf().get(CuwirePlugin.HOST, ""),
                "the test application leaves " + CuwirePlugin.HOST + " unset");
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        List<Integer> tasks = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            tasks.add(i);
        }
        Map<String, String> hosts = new TreeMap<>();
        for (Tuple2<String, String> t : jsc.parallelize(tasks, tasks.size())
                .map(i -> new Tuple2<>(
                        SparkEnv.get().executorId(),
                        SparkEnv.get().blockManager().blockManagerId().host()))
                .collect()) {
            hosts.put(t._1(), t._2());
        }
        Map<String, String> endpoints = CuwireSpark.executors();
        assertTrue(!hosts.isEmpty() && endpoints.keySet().containsAll(hosts.keySet()), hosts + " vs " + endpoints);
        for (Map.Entry<String, String> h : hosts.entrySet()) {
            assertEquals(h.getValue(), URI.create(endpoints.get(h.getKey())).getHost(), "executor " + h.getKey());
        }
    }
}
