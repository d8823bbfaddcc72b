/* lpmkit C ABI example: load a routing table, look addresses up in bulk, change a route
 * while looking up, and report errors with codes and messages.
 *
 *   cc -O2 -Ilpmkit-capi/include lpmkit-capi/examples/lookup.c \
 *      target/release/liblpmkit_capi.a -lpthread -ldl -lm -o lookup
 *   ./lookup TABLE ADDRESSES        # one IPv4 or IPv6 address per line (the table's family)
 *
 * Prints one line per address: `ADDRESS VALUE NAME` (VALUE 0 and NAME `-` for no route),
 * then checks add/delete and the error paths on a small table built from routes.
 * Exit status 0 when every check passed. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lpmkit.h"

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            fprintf(stderr, "check failed: " __VA_ARGS__);      \
            fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);  \
            exit(1);                                            \
        }                                                       \
    } while (0)

static int annotate(const char *table_path, const char *addr_path) {
    lpmkit_table *t = NULL;
    int rc = lpmkit_create_from_file(table_path, "auto", 0, &t);
    if (rc != LPMKIT_OK) {
        fprintf(stderr, "cannot load %s: %s: %s\n", table_path, lpmkit_strerror(rc),
                lpmkit_last_error());
        return 2;
    }
    int family = lpmkit_family(t);
    fprintf(stderr, "loaded %zu IPv%d routes, scheme %s\n", lpmkit_count(t), family,
            lpmkit_scheme(t));
    FILE *f = fopen(addr_path, "r");
    if (!f) {
        perror(addr_path);
        lpmkit_free(t);
        return 2;
    }
    size_t cap = 1024, n = 0;
    char (*text)[256] = malloc(cap * sizeof *text);
    uint32_t *v4 = malloc(cap * sizeof *v4);
    uint8_t (*v6)[16] = malloc(cap * sizeof *v6);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        if (n == cap) {
            cap *= 2;
            text = realloc(text, cap * sizeof *text);
            v4 = realloc(v4, cap * sizeof *v4);
            v6 = realloc(v6, cap * sizeof *v6);
        }
        snprintf(text[n], sizeof text[n], "%s", line);
        int ok = family == 4 ? inet_pton(AF_INET, line, &v4[n]) : inet_pton(AF_INET6, line, v6[n]);
        if (ok != 1) {
            fprintf(stderr, "%s: not an IPv%d address: %s\n", addr_path, family, line);
            return 2;
        }
        if (family == 4) v4[n] = ntohl(v4[n]); /* lpmkit_lookup_bulk takes host order */
        n++;
    }
    fclose(f);
    uint64_t *values = malloc((n ? n : 1) * sizeof *values);
    rc = family == 4 ? lpmkit_lookup_bulk(t, v4, values, n)
                     : lpmkit_lookup6_bulk(t, (const uint8_t(*)[16])v6, values, n);
    CHECK(rc == LPMKIT_OK, "lookup_bulk: %s", lpmkit_last_error());
    for (size_t i = 0; i < n; i++) {
        const char *name = lpmkit_value_name(t, values[i]);
        printf("%s %" PRIu64 " %s\n", text[i], values[i], name ? name : "-");
    }
    /* The wrong family's bulk lookup is an error with a code and a message. */
    uint64_t dummy;
    uint8_t a6[16] = {0};
    uint32_t a4 = 0;
    rc = family == 4 ? lpmkit_lookup6_bulk(t, (const uint8_t(*)[16])&a6, &dummy, 1)
                     : lpmkit_lookup_bulk(t, &a4, &dummy, 1);
    CHECK(rc == LPMKIT_EFAMILY, "wrong family gave %d", rc);
    free(text);
    free(v4);
    free(v6);
    free(values);
    lpmkit_free(t);
    return 0;
}

static void routes_and_updates(void) {
    lpmkit_route routes[3];
    memset(routes, 0, sizeof routes);
    uint8_t ten[4] = {10, 0, 0, 0}, ten1[4] = {10, 1, 0, 0}, any[4] = {0, 0, 0, 0};
    memcpy(routes[0].addr, ten, 4), routes[0].len = 8, routes[0].value = 100;
    memcpy(routes[1].addr, ten1, 4), routes[1].len = 16, routes[1].value = 101;
    memcpy(routes[2].addr, any, 4), routes[2].len = 0, routes[2].value = 1;
    lpmkit_table *t = NULL;
    int rc = lpmkit_create_from_routes(4, routes, 3, "dir24-8", UINT64_MAX, &t);
    CHECK(rc == LPMKIT_OK, "create_from_routes: %s", lpmkit_last_error());
    CHECK(strcmp(lpmkit_scheme(t), "dir24-8") == 0, "scheme %s", lpmkit_scheme(t));
    uint32_t keys[3] = {0x0a010203, 0x0a020000, 0x0b000000};
    uint64_t out[3];
    CHECK(lpmkit_lookup_bulk(t, keys, out, 3) == LPMKIT_OK, "lookup");
    CHECK(out[0] == 101 && out[1] == 100 && out[2] == 1, "values %" PRIu64, out[0]);

    CHECK(lpmkit_delete(t, any, 0) == LPMKIT_OK, "delete /0");
    CHECK(lpmkit_delete(t, any, 0) == LPMKIT_ENOENT, "delete /0 twice");
    uint8_t host[4] = {10, 2, 0, 0};
    CHECK(lpmkit_add(t, host, 32, 7) == LPMKIT_OK, "add /32");
    CHECK(lpmkit_lookup_bulk(t, keys, out, 3) == LPMKIT_OK, "lookup");
    CHECK(out[0] == 101 && out[1] == 7 && out[2] == UINT64_MAX, "after updates");
    CHECK(lpmkit_count(t) == 3, "count %zu", lpmkit_count(t));

    /* Errors: codes and messages, never a crash. */
    uint8_t bad[4] = {10, 0, 0, 1};
    rc = lpmkit_add(t, bad, 8, 1);
    CHECK(rc == LPMKIT_EINVAL && strstr(lpmkit_last_error(), "host bits"), "host bits: %s",
          lpmkit_last_error());
    CHECK(lpmkit_add(t, ten, 33, 1) == LPMKIT_EINVAL, "length 33");
    CHECK(lpmkit_add(NULL, ten, 8, 1) == LPMKIT_EINVAL, "null table");
    CHECK(lpmkit_lookup_bulk(t, NULL, out, 3) == LPMKIT_EINVAL, "null keys");
    lpmkit_free(t);

    lpmkit_table *u = NULL;
    CHECK(lpmkit_create(4, "no-such-scheme", 0, &u) == LPMKIT_ESCHEME, "unknown scheme");
    CHECK(strstr(lpmkit_last_error(), "no-such-scheme") != NULL, "%s", lpmkit_last_error());
    CHECK(lpmkit_create(5, NULL, 0, &u) == LPMKIT_EINVAL, "family 5");
    CHECK(lpmkit_create_from_file("/nonexistent/table.txt", NULL, 0, &u) == LPMKIT_EIO, "no file");
    CHECK(u == NULL, "no table on failure");

    /* IPv6 from routes. */
    lpmkit_route r6;
    memset(&r6, 0, sizeof r6);
    inet_pton(AF_INET6, "2001:db8::", r6.addr);
    r6.len = 32, r6.value = 6;
    CHECK(lpmkit_create_from_routes(6, &r6, 1, NULL, 0, &u) == LPMKIT_OK, "v6");
    uint8_t k6[2][16];
    inet_pton(AF_INET6, "2001:db8::1", k6[0]);
    inet_pton(AF_INET6, "2001:db9::1", k6[1]);
    CHECK(lpmkit_lookup6_bulk(u, (const uint8_t(*)[16])k6, out, 2) == LPMKIT_OK, "v6 lookup");
    CHECK(out[0] == 6 && out[1] == 0, "v6 values");
    lpmkit_free(u);
    lpmkit_free(NULL);
}

int main(int argc, char **argv) {
    routes_and_updates();
    if (argc == 3) return annotate(argv[1], argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [TABLE ADDRESSES]\n", argv[0]);
        return 2;
    }
    fprintf(stderr, "checks passed\n");
    return 0;
}
