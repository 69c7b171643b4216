"""Open everyday questions and requests for self-distillation, the kind of message a chat user types.

The first pool (gpu_demo.training.selfdistill.prompt_pool) crosses 50 task templates with 110 topics ("Write a
haiku about volcanoes"); the benches ask plain open questions ("How do bees make honey?", "What should I pack for a
weekend camping trip?"), on which a head trained on the first pool accepts less. This pool is
written in that register: how and why questions, tips, plans, emails, descriptions, histories and stories, each
form with its own natural fillers. None of it names what a bench prompt asks about (tests check BENCH_WORDS).
"""

from __future__ import annotations

import random

ACTIVITIES = (
    "learning to swim", "running a first 5k", "baking sourdough bread", "playing the violin", "growing tomatoes",
    "public speaking", "drawing portraits", "meditation", "cycling to work", "learning to cook", "rock climbing",
    "keeping a journal", "studying for exams", "learning to juggle", "writing poetry", "bird watching",
    "working from home", "taking better photos with a phone", "playing tennis", "learning to draw",
    "keeping houseplants alive", "learning to type faster", "training a puppy", "making new friends as an adult",
    "learning to ice skate", "saving for a holiday", "reading more books", "waking up early", "learning to code",
    "playing chess online", "sewing", "learning to dance", "keeping a tidy room", "singing in a choir",
    "making pottery", "fishing", "learning sign language", "brewing tea", "doing push-ups", "speed reading",
)

ACTIVITY_FORMS = (
    "Give me three tips for {x}.", "How do I get started with {x}?", "What mistakes do beginners make when {x}?",
    "How long does it take to get good at {x}?", "What do I need for {x}?", "Why do people enjoy {x}?",
    "Is {x} hard? What should I expect?",
)

THINGS = (
    "a refrigerator", "a microwave oven", "a compass", "soap", "a camera", "a thermometer", "an elevator",
    "a vaccine", "a battery", "a parachute", "a light bulb", "a zipper", "a telescope", "a smoke detector",
    "a bar code scanner", "a hearing aid", "an escalator", "a washing machine", "noise-cancelling headphones",
    "a dishwasher", "a traffic light", "an electric car", "a pressure cooker", "a touch screen", "a kettle",
    "a credit card", "a helicopter", "a heat pump", "a sewing machine", "a vending machine",
)

THING_FORMS = ("How does {x} work?", "Explain how {x} works to a child.", "Who invented {x}, and why?")

WHY_QUESTIONS = (
    "Why is the sky blue?", "Why do cats purr?", "Why do we yawn?", "Why does bread go stale?",
    "Why do onions make you cry?", "Why is the sea salty?", "Why do we dream?", "Why do stars twinkle?",
    "Why do we get goosebumps?", "Why does ice float?", "Why do dogs wag their tails?", "Why do we hiccup?",
    "Why is it hot at the equator?", "Why do our fingers wrinkle in water?", "Why do birds sing in the morning?",
    "Why does the moon change shape?", "Why do we need sleep?", "Why do some people get seasick?",
    "Why do cats land on their feet?", "Why does popcorn pop?", "How do birds know where to fly in winter?",
    "How do fish breathe underwater?", "How do plants drink water?", "How do clouds form?",
    "How do spiders spin webs?", "How do airplanes stay in the air?", "How does the body fight a cold?",
    "How do volcanoes erupt?", "How do magnets work?", "How do we see colours?", "How do ants find food?",
    "How does a seed grow into a tree?", "How do whales sleep?", "How is glass made?", "How is paper made?",
    "How is cheese made?", "How do tides work?", "How do our ears hear sound?", "How do snowflakes form?",
    "How do chameleons change colour?", "What causes thunder?", "What causes earthquakes?",
    "What makes a good friend?", "What is the best way to remember names?", "What happens when we sneeze?",
    "What is the difference between weather and climate?", "What is inflation, in simple terms?",
    "What are black holes?", "What does a good breakfast look like?", "What is the tallest animal, and why?",
    "What should I do if I cannot fall asleep?", "What makes a song catchy?",
    "What is a healthy amount of screen time?",
    "How can I stop procrastinating?", "How can I be more confident when I speak?", "How can I save water at home?",
    "How do I make a good first impression?", "How do I keep my phone battery healthy?",
    "How do I politely say no to a friend?", "How do I write a good thank-you card?",
)

MESSAGES = (
    "asking a neighbour to water my plants next week", "thanking my teacher for a great year",
    "moving our meeting to Tuesday afternoon", "inviting friends to my birthday party on Saturday",
    "apologising for missing a phone call", "welcoming a new member to the team",
    "asking my landlord to fix the heating",
    "congratulating a friend on a new job", "reminding the team about Monday's deadline",
    "asking for a day off next month", "telling a client their order will be two days late",
    "thanking a colleague for helping with a report", "asking a professor for a recommendation letter",
    "inviting my family to a picnic", "saying goodbye to coworkers before I move abroad",
    "asking a shop about a refund for a broken lamp", "following up after a job interview",
    "inviting a neighbour to a street party", "asking a friend to return a borrowed book",
    "wishing my grandmother a happy birthday",
)

MESSAGE_FORMS = ("Write a friendly email {x}.", "Write a short, polite message {x}.", "Draft a text message {x}.")

SCENES = (
    "morning routine", "picnic in the park", "winter evening at home", "road trip", "birthday party",
    "rainy afternoon", "weekend in a big city", "first day at a new school", "walk in the mountains",
    "family dinner", "lazy Sunday", "afternoon in a library", "visit to a farm", "night under the stars",
    "summer holiday in the countryside", "day at an amusement park", "garden party", "snowy morning",
    "evening at a street market", "trip to the zoo",
)

SCENE_FORMS = ("Describe a perfect {x}.", "What makes a great {x}?", "Write a short paragraph about a {x}.")

TRIPS = (
    "a week in Paris", "a ski holiday", "a business trip", "a long flight", "a day of hiking",
    "a visit to my grandparents",
    "a school trip to a museum", "a summer week by a lake", "a train journey across Europe", "a wedding abroad",
    "a road trip with kids", "a rainy weekend in London", "a first trip to Japan", "a cruise", "a music festival",
    "a sailing weekend", "a week of volunteering on a farm", "a trip to the mountains in winter",
)

TRIP_FORMS = ("What should I pack for {x}?", "Help me plan {x}.", "What are some tips for {x}?")

INVENTIONS = (
    "the telephone", "the umbrella", "paper money", "the calendar", "the pencil", "the radio", "eyeglasses",
    "the wheel", "the compass", "the camera", "the clock tower", "the television", "the postal service",
    "the sandwich", "ice cream", "the typewriter", "the light bulb", "the piano keyboard", "soap", "the zoo",
    "the alphabet", "the lawn mower", "the toothbrush", "the elevator", "the paper clip",
)

INVENTION_FORMS = ("Tell me about the history of {x}.", "How has {x} changed over time?",
                   "Give me a short timeline of {x}.")

PREMISES = (
    "a baker who finds a magic oven", "a girl who can talk to trees", "a robot who wants to paint",
    "two old friends who meet after twenty years", "a lost dog finding its way home", "a dragon who is afraid of fire",
    "a boy who finds a map in his attic", "a cat who runs a bookshop", "a town where it never stops snowing",
    "a grandmother who was once a pirate", "a clock that can stop time", "a shy student who wins a talent show",
    "a train that travels to the moon", "a fox and a rabbit who become friends", "a painter who loses her colours",
    "a detective who solves mysteries with her nose", "an astronaut who misses home", "a garden that grows overnight",
    "a letter that arrives fifty years late", "a king who gives away his crown",
)

PREMISE_FORMS = ("Write a short story about {x}.", "Tell me a bedtime story about {x}.",
                 "Write the opening paragraph of a novel about {x}.")

FAMILIES = (
    (ACTIVITY_FORMS, ACTIVITIES), (THING_FORMS, THINGS), (MESSAGE_FORMS, MESSAGES), (SCENE_FORMS, SCENES),
    (TRIP_FORMS, TRIPS), (INVENTION_FORMS, INVENTIONS), (PREMISE_FORMS, PREMISES),
)

# Words of the benches' prompts (gpu_demo.training.eagle_data.BENCH_CHAT_PROMPTS) that no open prompt may use.
BENCH_WORDS = ("lighthouse", "rainbow", "guitar", "exercise", "beach", "bees", "honey", "lunch", "leaves", "autumn",
               "camping", "bicycle")

OPEN_SEED = 20261206  # the open pool's order; fixed so an open shard always means the same prompts


def open_pool() -> list[str]:
    """Every open prompt (each form of a family over each of its fillers, plus WHY_QUESTIONS), shuffled once."""
    pool = [f.format(x=x) for forms, fillers in FAMILIES for f in forms for x in fillers] + list(WHY_QUESTIONS)
    random.Random(OPEN_SEED).shuffle(pool)
    return pool
