package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.junit.jupiter.api.Test;

/**
 * The README's "On Spark" tables checked against the code, both ways: every {@code spark.cuwire.*} setting the plugin
 * reads is in the settings table and every one there exists; every stage's params are in the stages table (the
 * column params aside), those listed as MLlib's are MLlib's stage's, the aliases are not, and the model classes have
 * the attributes listed. No Spark application is needed.
 */
class ReadmeSparkClaimsTest {
    private static final Path README = Path.of("../README.md");
    private static final Pattern CODE = Pattern.compile("`([^`]+)`");
    private static final Set<String> COLUMNS =
            Set.of("featuresCol", "labelCol", "predictionCol", "rawPredictionCol", "probabilityCol");
    private static final List<String> MLLIB_PACKAGES = List.of("regression", "classification", "clustering", "feature");

    /** The lines of the README's "On Spark" section. */
    private static List<String> section() throws IOException {
        assumeTrue(Files.exists(README), "reads the README: runs from the cuwire-spark module of a checkout");
        List<String> out = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(README, StandardCharsets.UTF_8)) {
            if (line.startsWith("## ")) {
                in = line.equals("## On Spark");
            } else if (in) {
                out.add(line);
            }
        }
        return out;
    }

    /** The cells of the table rows after the header that starts with {@code header}. */
    private static List<String[]> table(List<String> lines, String header) {
        List<String[]> rows = new ArrayList<>();
        boolean in = false;
        for (String line : lines) {
            if (line.startsWith(header)) {
                in = true;
            } else if (in && line.startsWith("|---")) {
                continue;
            } else if (in && line.startsWith("|")) {
                String[] cells = line.substring(1, line.length() - 1).split("\\|", -1);
                rows.add(Arrays.stream(cells).map(String::strip).toArray(String[]::new));
            } else if (in) {
                break;
            }
        }
        assertFalse(rows.isEmpty(), "the README has a table '" + header + "'");
        return rows;
    }

    /** The code spans of {@code cell}. */
    private static List<String> codes(String cell) {
        List<String> out = new ArrayList<>();
        Matcher m = CODE.matcher(cell);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    @Test
    void shouldListEveryCuwireSettingThePluginReadsInTheSettingsTable() throws IOException, IllegalAccessException {
        Set<String> inReadme = new TreeSet<>();
        for (String[] row : table(section(), "| setting |")) {
            for (String key : codes(row[0])) {
                if (key.startsWith("spark.cuwire.")) {
                    inReadme.add(key);
                }
            }
        }
        Set<String> inCode = new TreeSet<>();
        for (Field f : CuwirePlugin.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers())
                    && f.getType() == String.class
                    && ((String) f.get(null)).startsWith("spark.cuwire.")) {
                inCode.add((String) f.get(null));
            }
        }
        assertEquals(inCode, inReadme);
    }

    @Test
    void shouldListEveryParamOfEveryStageAndTheModelsAttributesInTheStagesTable() throws Exception {
        List<String[]> rows = table(section(), "| stage |");
        assertEquals(9, rows.size(), "one row per stage");
        for (String[] row : rows) {
            String stageName = codes(row[0]).getFirst();
            Params stage = (Params) Class.forName("io.cuwire.spark.ml." + stageName)
                    .getConstructor()
                    .newInstance();
            Params mllib =
                    codes(row[1]).isEmpty() ? null : mllibStage(codes(row[1]).getFirst());
            Set<String> listed = new TreeSet<>();
            Matcher m = Pattern.compile("`([^`]+)`( \\(`([^`]+)`\\))?").matcher(row[2]);
            while (m.find()) {
                listed.add(m.group(1));
                assertTrue(
                        mllib != null && mllib.hasParam(m.group(1)),
                        stageName + ": " + m.group(1) + " is a param of MLlib's " + row[1]);
                if (m.group(3) != null) {
                    listed.add(m.group(3));
                    assertFalse(
                            mllib.hasParam(m.group(3)), stageName + ": the alias " + m.group(3) + " is not MLlib's");
                }
            }
            listed.addAll(codes(row[3]));
            Set<String> params = new TreeSet<>();
            for (Param<?> p : stage.params()) {
                if (!COLUMNS.contains(p.name()) || listed.contains(p.name())) {
                    params.add(p.name());
                }
            }
            assertEquals(params, listed, stageName + "'s params");
            List<String> model = codes(row[4]);
            Class<?> modelClass = Class.forName("io.cuwire.spark.ml." + model.getFirst());
            String attributes = row[4].contains(";") ? row[4].substring(row[4].indexOf(';')) : "";
            for (String attribute : codes(attributes)) {
                Method a = modelClass.getMethod(attribute);
                assertTrue(Modifier.isPublic(a.getModifiers()), modelClass.getSimpleName() + "." + attribute);
            }
        }
    }

    /** MLlib's stage of that name, made with a fresh uid. */
    private static Params mllibStage(String name) throws ReflectiveOperationException {
        for (String pkg : MLLIB_PACKAGES) {
            try {
                return (Params) Class.forName("org.apache.spark.ml." + pkg + "." + name)
                        .getConstructor()
                        .newInstance();
            } catch (ClassNotFoundException ignored) {
                // the next package
            }
        }
        throw new ClassNotFoundException("MLlib has no stage " + name);
    }
}
