package dev.berth.mcp.cli;

import java.util.Collection;

/** The closest of a set of names to a mistyped one (Levenshtein distance), for "did you mean" hints. Stateless. */
final class Suggestions {
    private Suggestions() {}

    /** The closest candidate within a typo's reach (at most 2 edits, fewer for short names), or null. */
    static String closest(String typed, Collection<String> candidates) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String c : candidates) {
            int d = distance(typed, c);
            if (d < bestDistance) {
                best = c;
                bestDistance = d;
            }
        }
        int reach = Math.min(2, Math.max(1, typed.replaceFirst("^-+", "").length() / 3));
        return bestDistance <= reach ? best : null;
    }

    /** Edits (insertions, deletions, substitutions; a swap of neighbours counts once) from {@code a} to {@code b}. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) d[i][0] = i;
        for (int j = 0; j <= b.length(); j++) d[0][j] = j;
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
