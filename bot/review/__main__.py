"""`python -m bot.review ...` is `verbatim review ...`: usable before (and without) the main command's wiring."""

from bot.review.cli import review

if __name__ == "__main__":
    review(prog_name="python -m bot.review")
