package io.cuwire.transport.internal.socket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/**
 * An ephemeral EC P-256 key pair and an X.509 v3 certificate for it, signed by itself (ECDSA with SHA-256), made
 * with the JDK's public API and a DER encoder of the few types a certificate needs (the JDK has no public API that
 * makes a certificate). Subject and issuer are {@code CN=cuwire}; it is valid from an hour ago for a day. Nobody
 * checks it: it only lets TLS run, and cuwire's proof of the cluster secret, bound to the TLS channel, authenticates.
 */
final class SelfSignedCertificate {
    /** ecdsa-with-SHA256, 1.2.840.10045.4.3.2. */
    private static final byte[] ECDSA_WITH_SHA256 = {0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x04, 0x03, 0x02};
    /** commonName, 2.5.4.3. */
    private static final byte[] COMMON_NAME = {0x55, 0x04, 0x03};

    private static final DateTimeFormatter UTC_TIME =
            DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);
    private static final DateTimeFormatter GENERALIZED_TIME =
            DateTimeFormatter.ofPattern("yyyyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);
    private static final SecureRandom RANDOM = new SecureRandom();

    private SelfSignedCertificate() {}

    /** A fresh EC P-256 key pair. */
    static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
        return generator.generateKeyPair();
    }

    /**
     * A key manager that presents {@code pair}'s private key with its self-signed certificate for EC signatures: no
     * key store in between (a PKCS#12 one would encrypt the key and decrypt it again, thousands of PBKDF2 rounds
     * each, within the first TLS client's handshake time).
     */
    static X509ExtendedKeyManager keyManager(KeyPair pair) throws GeneralSecurityException {
        X509Certificate[] chain = {certificate(pair, Instant.now())};
        String alias = "cuwire";
        return new X509ExtendedKeyManager() {
            @Override
            public String[] getClientAliases(String keyType, Principal[] issuers) {
                return null;
            }

            @Override
            public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
                return null;
            }

            @Override
            public String[] getServerAliases(String keyType, Principal[] issuers) {
                return "EC".equals(keyType) ? new String[] {alias} : null;
            }

            @Override
            public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
                return "EC".equals(keyType) ? alias : null;
            }

            @Override
            public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
                return "EC".equals(keyType) ? alias : null;
            }

            @Override
            public X509Certificate[] getCertificateChain(String name) {
                return alias.equals(name) ? chain.clone() : null;
            }

            @Override
            public PrivateKey getPrivateKey(String name) {
                return alias.equals(name) ? pair.getPrivate() : null;
            }
        };
    }

    /** The self-signed certificate of {@code pair}, valid from an hour before {@code now} for a day. */
    static X509Certificate certificate(KeyPair pair, Instant now) throws GeneralSecurityException {
        byte[] algorithm = sequence(tlv(0x06, ECDSA_WITH_SHA256));
        byte[] name = sequence(tlv(
                0x31, sequence(tlv(0x06, COMMON_NAME), tlv(0x0c, "cuwire".getBytes(StandardCharsets.UTF_8)))));
        byte[] serial = new byte[16];
        RANDOM.nextBytes(serial);
        serial[0] = (byte) (serial[0] & 0x7f | 0x40); // positive, and 16 bytes long in DER
        byte[] tbs = sequence(
                tlv(0xa0, tlv(0x02, new byte[] {2})), // [0] EXPLICIT version: v3
                tlv(0x02, serial),
                algorithm,
                name,
                sequence(time(now.minus(Duration.ofHours(1))), time(now.plus(Duration.ofDays(1)))),
                name,
                pair.getPublic().getEncoded()); // SubjectPublicKeyInfo, DER already
        Signature signer = Signature.getInstance("SHA256withECDSA");
        signer.initSign(pair.getPrivate());
        signer.update(tbs);
        byte[] signature = signer.sign();
        byte[] bits = new byte[signature.length + 1]; // no unused bits
        System.arraycopy(signature, 0, bits, 1, signature.length);
        byte[] der = sequence(tbs, algorithm, tlv(0x03, bits));
        return (X509Certificate)
                CertificateFactory.getInstance("X.509").generateCertificate(new ByteArrayInputStream(der));
    }

    /** UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
    private static byte[] time(Instant t) {
        boolean utc = t.atZone(ZoneOffset.UTC).getYear() < 2050;
        return utc
                ? tlv(0x17, UTC_TIME.format(t).getBytes(StandardCharsets.US_ASCII))
                : tlv(0x18, GENERALIZED_TIME.format(t).getBytes(StandardCharsets.US_ASCII));
    }

    private static byte[] sequence(byte[]... parts) {
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            content.writeBytes(p);
        }
        return tlv(0x30, content.toByteArray());
    }

    /** A DER type-length-value of {@code tag} (definite length, short or long form). */
    static byte[] tlv(int tag, byte[] value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(value.length + 6);
        out.write(tag);
        int n = value.length;
        if (n < 0x80) {
            out.write(n);
        } else {
            int bytes = n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x1000000 ? 3 : 4;
            out.write(0x80 | bytes);
            for (int i = bytes - 1; i >= 0; i--) {
                out.write(n >>> (8 * i));
            }
        }
        out.writeBytes(value);
        return out.toByteArray();
    }
}
