"""How the overflow of a 2:4 split lands on the lanes of an mma.sp fragment (CPU only, no GPU):

    python3 bench/experiments/slotfill-overflow.py [density] [steps]

W at `density` (default 0.5), each element kept on its own; per 16 x 32 step of m16n8k32.sp, lane l holds rows l/4
and l/4 + 8, groups l%4 and l%4 + 4 (four groups of 4 columns). A 2:4 split keeps 2 values a group on the sparse
tensor cores; the rest (the overflow) must be multiplied on CUDA cores, and a warp runs as long as its busiest lane.
Prints, per lane and step, the overflow's mean and the warp's maximum when each lane takes its own, when the 4 lanes
of a quad (the same two rows) share theirs evenly, and what is left after each lane fills its own empty 2:4 slots
(bytes saved, not work: a filled value still needs its CUDA-core multiply-adds)."""
import random
import sys


def main():
    density = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    rng = random.Random(1)
    sums = {"own": [0.0, 0.0], "quad": [0.0, 0.0], "left after filling": [0.0, 0.0]}
    for _ in range(steps):
        count = [[sum(rng.random() < density for _ in range(4)) for _ in range(8)] for _ in range(16)]
        over, left = [], []
        for lane in range(32):
            g, t = lane // 4, lane % 4
            o = e = 0
            for r in (g, g + 8):
                for q in (t, t + 4):
                    o += max(count[r][q] - 2, 0)
                    e += max(2 - count[r][q], 0)
            over.append(o)
            left.append(max(o - e, 0))
        quads = [sum(over[4 * i:4 * i + 4]) for i in range(8)]
        for name, per_lane, busiest in (("own", over, max(over)), ("quad", over, max((x + 3) // 4 for x in quads)),
                                        ("left after filling", left, max(left))):
            sums[name][0] += sum(per_lane) / 32
            sums[name][1] += busiest
    print(f"density {density}, {steps} steps of 16 x 32: overflow values per lane and step (of 16 elements)")
    for name, (mean, busiest) in sums.items():
        print(f"  {name:20} mean {mean / steps:.2f}, busiest lane of the warp {busiest / steps:.2f}")


if __name__ == "__main__":
    main()
