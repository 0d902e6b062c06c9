"""The fabric checks of leases.sh with `fabric`: analysers holding shards by lease publish each
window's fabric contribution as the parts of the shards they hold, one of them killed and its
shard taken over; the fabric stage judging the parts must give the reference's switch and link
findings, every field, and judge every window whole.

Usage: compare_lease_fabric.py WORK REFERENCE_WINDOWS SURVIVOR"""
import re
import sys

import compare_shards
import compare_state as c


def main():
    work, ref_windows, survivor = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ref = c.load(f"{work}/ref.json")
    fabric = c.load(f"{work}/F.json")
    kept = c.load(f"{work}/{survivor}.json")
    compare_shards.check_fabric_findings(ref, fabric)
    fs = fabric["ingest"]["stream"]
    c.check(fs["windows_judged"] == ref_windows and fs["windows_judged_incomplete"] == 0 and
            fs["contributions_bad"] == 0 and fs["windows_pending"] == 0,
            f"the fabric stage judged the reference's {ref_windows} windows "
            f"({fs['windows_judged']}), none incomplete ({fs['windows_judged_incomplete']}), "
            f"from {fs['contributions_received']} contributions "
            f"({fs['contributions_duplicate']} duplicates), none bad, none pending")
    c.check(fs["contributions_received"] >= 2 * ref_windows,
            f"a contribution of each shard for each window ({fs['contributions_received']} for "
            f"{ref_windows} windows)")
    c.check(not any(compare_shards.fabric_kind(r) for r in compare_shards.finding_rows(kept)),
            f"{survivor} keeps its own switch and link findings out (--fabric-stage)")
    published = kept["ingest"]["stream"]["fabric"]
    c.check(published["given_up"] == 0 and published["published"] > 0,
            f"{survivor} published {published['published']} contributions "
            f"({published['published_empty']} empty), none given up")
    # Each part holds its own shard's records: both shards' jobs run all along, so every window
    # has records in both parts, before the takeover (one analyser each) and after (one for both).
    by_shard = [[int(n) for n in m[1].split()]
                for m in (re.search(r"fabric window .*\(by shard: ([0-9 ]+)\)", line)
                          for line in open(f"{work}/fabric.log")) if m]
    c.check(len(by_shard) == ref_windows and all(len(w) == 2 and min(w) > 0 for w in by_shard),
            f"every window judged has records in both shards' parts (records by shard, window by "
            f"window: {', '.join('/'.join(map(str, w)) for w in by_shard)})")
    sys.exit(1 if c.fails else 0)


if __name__ == "__main__":
    main()
