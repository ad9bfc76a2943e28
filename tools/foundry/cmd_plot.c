/* foundry plot RUN_DIR: redraws the loss curves of a run. */
#include "cli.h"

#include <stdlib.h>

int cmd_plot(int argc, char **argv)
{
    const char *title = NULL;
    cli_flag flags[] = {
        {.name = "--title", .kind = CLI_STR, .dst = &title, .meta = "TEXT",
         .help = "title over the plot (default: the run directory)"},
    };
    cli_cmd cmd = {
        .name = "plot", .usage = "plot RUN_DIR [--title TEXT]",
        .summary = "Redraws RUN_DIR/loss.svg (train and val loss against step, lr below) from\n"
                   "RUN_DIR/metrics.jsonl; training refreshes the same file at every eval.",
        .flags = flags, .n_flags = (int)(sizeof flags / sizeof flags[0]), .min_pos = 1, .max_pos = 1,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    char *metrics = NULL, *svg = NULL;
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    metrics = cli_path(pos[0], "metrics.jsonl");
    svg = cli_path(pos[0], "loss.svg");
    if (!metrics || !svg ||
        tm_plot_metrics_svg(metrics, svg, title ? title : pos[0]) != TM_OK) {
        rc = cli_lib_error("plot");
        goto done;
    }
    printf("wrote %s\n", svg);
done:
    free(metrics);
    free(svg);
    free(pos);
    return rc;
}
