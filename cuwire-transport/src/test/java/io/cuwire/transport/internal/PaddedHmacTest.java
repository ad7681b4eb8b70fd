package io.cuwire.transport.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.Random;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/** The session tags' HMAC with its pads hashed once gives the JDK's HmacSHA256 bytes, for every key length. */
class PaddedHmacTest {
    @Test
    void shouldGiveTheJdksHmacSha256ForKeysShorterThanLongerThanAndOfOneBlock() throws Exception {
        Random random = new Random(20261202);
        for (int keyLength : new int[] {1, 16, 32, 63, 64, 65, 200}) {
            byte[] key = new byte[keyLength];
            random.nextBytes(key);
            SessionKeys.PaddedHmac padded = new SessionKeys.PaddedHmac(key);
            Mac jdk = Mac.getInstance("HmacSHA256");
            jdk.init(new SecretKeySpec(key, "HmacSHA256"));
            for (int length : new int[] {0, 5, 55, 56, 64, 200, 1100}) {
                byte[] message = new byte[length];
                random.nextBytes(message);
                MessageDigest inner = padded.begin();
                inner.update(ByteBuffer.wrap(message));
                assertArrayEquals(
                        jdk.doFinal(message), padded.finish(inner), "key " + keyLength + ", message " + length);
            }
        }
    }
}
