/* spirals.c — the training tests' spiral data (spirals.h). */
#include "spirals.h"

#include <math.h>

void tt_make_spirals(float *pts, int64_t *labels)
{
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < TT_SP_PER; i++) {
            int k = c * TT_SP_PER + i;
            double r = 0.1 + 0.9 * i / (TT_SP_PER - 1.0);
            double th = 3.0 * 3.14159265358979323846 * r +
                        3.14159265358979323846 * c;
            pts[2 * k] = (float)(r * cos(th));
            pts[2 * k + 1] = (float)(r * sin(th));
            labels[k] = c;
        }
}
