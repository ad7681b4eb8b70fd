package io.cuwire.transport;

import java.net.InetAddress;
import java.util.Locale;

/**
 * Whether a {@code tcp://} connection runs inside TLS 1.3 ({@link TransportConfig#tls()}). Both sides decide, and
 * the decision is explicit on the wire: a client that uses TLS opens with a TLS record, one that does not with
 * cuwire's hello, and the listener tells them apart by the first byte.
 *
 * <p>TLS here gives confidentiality and integrity of everything after the TLS handshake (cuwire's handshake, headers,
 * host frames and staged device frames alike). It does not authenticate anyone by certificate: a client accepts any
 * certificate, and authentication stays cuwire's secret-based proof, bound to the TLS channel (so a relay that
 * terminates TLS itself gets proofs that do not verify). Without a secret, TLS protects against a passive observer
 * only: an active relay can terminate TLS on both sides unnoticed.
 *
 * <p>The system property {@value #PROPERTY} ({@code auto}, {@code on}, {@code off}) sets the default of every
 * {@link TransportConfig.Builder}.
 */
public enum TlsMode {
    /**
     * TLS unless the peer is a loopback address (the default): a client uses TLS toward every address that is not
     * loopback; a listener accepts plaintext only from loopback peers.
     */
    AUTO,
    /** TLS always: a client always uses it; a listener refuses plaintext from every peer. */
    ON,
    /** No TLS: a client never uses it; a listener refuses TLS and accepts plaintext from every peer. */
    OFF;

    /** The system property that sets the default mode. */
    public static final String PROPERTY = "cuwire.transport.tls";

    /**
     * Whether a client in this mode uses TLS toward {@code target}.
     */
    public boolean clientUsesTls(InetAddress target) {
        return this == ON || this == AUTO && !target.isLoopbackAddress();
    }

    /**
     * Whether a listener in this mode takes plaintext from a peer, {@code loopback} telling whether the peer's
     * address is a loopback address.
     */
    public boolean acceptsPlaintext(boolean loopback) {
        return this == OFF || this == AUTO && loopback;
    }

    /**
     * The mode the system property {@value #PROPERTY} names; {@link #AUTO} when it is not set.
     *
     * @throws IllegalArgumentException if it is set to something else than {@code auto}, {@code on} or {@code off}
     */
    public static TlsMode fromProperty() {
        return parse(System.getProperty(PROPERTY));
    }

    static TlsMode parse(String value) {
        if (value == null) {
            return AUTO;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "on" -> ON;
            case "off" -> OFF;
            default -> throw new IllegalArgumentException(PROPERTY + "=" + value + " (expected: auto, on or off)");
        };
    }
}
