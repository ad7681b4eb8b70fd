package io.cuwire.cluster;

import io.cuwire.test.TestRandom;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The hostile-peer suite of issue 15 (deliverable 7), written once for every role of the node runtime: a subclass
 * says which schemes its node listens on and how it starts the node ({@link HostileTarget}); the rest is the same.
 * The node runs in a process of its own on the emulated device, its client beside the attackers, and every round
 * brings the attacks of findings 1–6, 8 and 10 at once (finding 6, forged device references, over {@code ipc} only;
 * finding 7, an {@code Error} while decoding, needs a worker with a small heap of its own: {@link HostileClientTest})
 * plus a handshake fuzzer and a header fuzzer ({@link HostileCampaign}); after each round the node must be alive,
 * its client and a new peer served, its accounts, store, cache, direct and mapped buffer pools and files back at
 * their baseline; at the end it must stop cleanly once, having logged the peers it refused (finding 9). Loopback only.
 * A check that cannot apply to a role (the role says why, {@link HostileTarget#carrierUnanswered}) is not passed
 * silently: the final line names it with the reason, and so does a report entry of the test.
 *
 * <p>The mutants come from {@link TestRandom} (a fixed base seed in CI, printed; {@code -Dcuwire.test.seed=random}
 * for a new one); {@value #ROUNDS_PROPERTY} sets the number of rounds for a longer run (default {@value #ROUNDS}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class HostilePeerSuite {
    /** System property: rounds per transport. */
    static final String ROUNDS_PROPERTY = "cuwire.hostile.rounds";

    static final int ROUNDS = 4;
    /** Per round: handshake mutants, header mutants, attackers at once. */
    private static final int HANDSHAKES = 300;

    private static final int HEADERS = 1000;
    private static final int PARALLEL = 6;

    /** The schemes the node of this role listens on. */
    protected abstract List<String> schemes();

    /** Starts the node of this role listening over {@code scheme}, with its client. */
    protected abstract HostileTarget start(String scheme) throws Exception;

    @ParameterizedTest
    @MethodSource("schemes")
    @Timeout(value = 30, unit = TimeUnit.MINUTES) // a bound for long runs; the default rounds: 40-60 s each
    void shouldKeepServingItsClientAndComeBackToItsBaselineThroughEveryRoundOfHostilePeers(
            String scheme, TestInfo info, TestReporter reporter) throws Exception {
        int rounds = Integer.getInteger(ROUNDS_PROPERTY, ROUNDS);
        try (HostileCampaign campaign =
                HostileCampaign.start(start(scheme), scheme, TestRandom.seed(TestRandom.name(info)), System.out)) {
            for (int round = 0; round < rounds; round++) {
                campaign.round(round, HANDSHAKES, HEADERS, PARALLEL);
            }
            campaign.finish();
            List<String> notApplicable = campaign.notApplicable();
            System.out.println("[hostile] " + scheme + " " + campaign.target().role() + ": " + rounds + " rounds, "
                    + campaign.connections.get() + " attacker connections, " + campaign.mutants.get()
                    + " header mutants; the client was served " + campaign.servedNanos.size() + " times; "
                    + (notApplicable.isEmpty()
                            ? "every check applied"
                            : "not applicable to the " + campaign.target().role() + ": " + notApplicable));
            for (String check : notApplicable) {
                reporter.publishEntry(
                        "not applicable to the " + campaign.target().role(), check);
            }
        }
    }
}
